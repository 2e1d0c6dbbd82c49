# ---- probe ----
# socket(FAMILY, TYPE, PROTO) for families and protocols the policy refuses
# whatever the kernel has built (ARGS, decimal). Closed at once if made.
fam, typ, proto = (int(a) for a in ARGS)
r, e = sc("socket", fam, typ, proto)
if r >= 0:
    os.close(r)
expect_fail((r, e), "socket(%d, %d, %d)" % (fam, typ, proto))
