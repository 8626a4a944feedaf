"""The byte multiples (IEC): a leaf every module may stand on. kerasbench.units reads and writes sizes with them."""

KIB, MIB, GIB, TIB = 1024, 1024**2, 1024**3, 1024**4
