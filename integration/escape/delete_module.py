# delete_module(2) of a module that does not exist, O_NONBLOCK.
expect_fail(sc("delete_module", b"ward_escape_no_such_module", 0x800), "delete_module")
