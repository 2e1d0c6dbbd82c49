# CVE-2019-5736: open /proc/self/exe (the host's python3) for writing; open only, never written.
open_only("/proc/self/exe", os.O_WRONLY)
