# open_tree(AT_FDCWD, "/", 0): an O_PATH-like fd, no clone, closed at once.
r, e = sc("open_tree", AT_FDCWD, b"/", 0)
if r >= 0:
    os.close(r)
expect_fail((r, e), "open_tree")
