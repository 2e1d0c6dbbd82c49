# lookup_dcookie(2) with a zero cookie and a NULL buffer.
expect_fail(sc("lookup_dcookie", 0, None, 0), "lookup_dcookie")
