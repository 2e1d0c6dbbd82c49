# Open /proc/sysrq-trigger for writing; open only, nothing is ever written.
open_only("/proc/sysrq-trigger", os.O_WRONLY)
