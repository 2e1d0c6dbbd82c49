# setdomainname(NULL, 1): EFAULT even for root, after the capability check.
expect_fail(sc("setdomainname", None, 1), "setdomainname")
