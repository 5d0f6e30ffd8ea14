"""The Paimon ``.row`` codec: footer, block index, block cache, reader (with
its scattered takes and decoding pools), writer (with Java's ZSTD frames) and
verify. The compiled row codec it drives is ``rowformat._rowcodec``; the
types, Arrow mapping, casts and byte sources it shares with ``.blob`` and
Fory live at the top of the package. Its public names are re-exported by
``rowformat``."""
