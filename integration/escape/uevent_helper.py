# Open /sys/kernel/uevent_helper for writing (the kernel runs it as root on hotplug); open only.
open_only("/sys/kernel/uevent_helper", os.O_WRONLY)
