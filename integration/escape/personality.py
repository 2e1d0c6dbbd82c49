# personality(ADDR_NO_RANDOMIZE): would turn off ASLR for the probe process only.
expect_fail(sc("personality", 0x0040000), "personality(ADDR_NO_RANDOMIZE)")
