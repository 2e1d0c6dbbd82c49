# Read the init's environment (the caller's secrets may be there); open only.
open_only("/proc/1/environ", os.O_RDONLY)
