# request_key(2) with NULL type and description.
expect_fail(sc("request_key", None, None, None, 0), "request_key")
