# personality(ADDR_NO_RANDOMIZE | 1<<32): the kernel takes an unsigned int, so the high bit hides the value from a 64-bit compare.
expect_fail(sc("personality", 0x0040000 | 1 << 32), "personality(ADDR_NO_RANDOMIZE|1<<32)")
