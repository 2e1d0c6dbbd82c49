# Open /proc/sys/kernel/core_pattern for writing (a pipe there runs as root on the host); open only.
open_only("/proc/sys/kernel/core_pattern", os.O_WRONLY)
