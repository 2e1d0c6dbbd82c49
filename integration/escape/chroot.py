# chroot(2) to "/": the root stays what it was; only the reachability of the call is tested.
expect_fail(sc("chroot", b"/"), "chroot")
