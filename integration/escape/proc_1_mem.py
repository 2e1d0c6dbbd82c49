# Read the init's memory through /proc/1/mem (it must be non-dumpable); open only.
open_only("/proc/1/mem", os.O_RDONLY)
