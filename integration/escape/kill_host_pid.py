# kill(hostpid, 0) of a host process the test started (ARGS[0] = its host pid): signal 0 only checks.
expect_fail(sc("kill", int(ARGS[0]), 0), "kill(hostpid, 0)")
