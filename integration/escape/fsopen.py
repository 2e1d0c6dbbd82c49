# fsopen(2) of a filesystem type that does not exist.
expect_fail(sc("fsopen", b"ward-nonexistent-fs", 0), "fsopen")
