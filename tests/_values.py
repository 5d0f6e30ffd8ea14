"""Comparing Python values as to_pylist() gives them."""
import datetime as dt
from decimal import Decimal


def same(a, b) -> bool:
    """Equal and of the same Python types throughout (a Decimal's exponent, a
    datetime's tzinfo too): == alone takes 1.5 for Decimal("1.50") and 1 for True."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, (dt.datetime, dt.time)):
        return a == b and a.tzinfo == b.tzinfo
    return a == b
