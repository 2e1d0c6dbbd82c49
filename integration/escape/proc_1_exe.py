# CVE-2019-5736 against the init: open /proc/1/exe (ward's binary) for writing; open only.
open_only("/proc/1/exe", os.O_WRONLY)
