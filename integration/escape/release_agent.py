# CVE-2022-0492: new user+mount+cgroup namespaces, then mount a cgroup v1 hierarchy to reach release_agent.
# The mount, if any, is in the probe's private mount namespace (shared mounts turn slave), unmounted at once; release_agent is never touched.
r, e = sc("unshare", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP)
if r == -1:
    report(True, ename(e))
r, e = sc("mount", b"cgroup", b"/tmp", b"cgroup", 0, b"rdma")
if r == 0:
    sc("umount2", b"/tmp", 2)
    report(False, "mounted cgroup v1 (rdma) in a new user namespace")
report(True, ename(e))
