# CVE-2019-5736 as exploited: O_PATH fd of /proc/self/exe, then reopen it through /proc/self/fd for writing; open only.
fd = os.open("/proc/self/exe", os.O_PATH)
open_only("/proc/self/fd/%d" % fd, os.O_WRONLY)
