# acct(2) to a file in a nonexistent directory.
expect_fail(sc("acct", b"/nonexistent-ward/acct"), "acct")
