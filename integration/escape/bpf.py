# bpf(2) with an invalid command and a NULL attr.
expect_fail(sc("bpf", 0x7fff, None, 0), "bpf")
