"""trainsim.lazy: a package name imported on its first read, kept, and an unknown name refused as a
module would refuse it."""

import pytest

from trainsim.lazy import lazy_getattr


def test_first_read_imports_and_keeps_the_name():
    ns: dict = {}
    get = lazy_getattr("pkg", {"sqrt": "math"}, ns)
    import math
    assert get("sqrt") is math.sqrt and ns == {"sqrt": math.sqrt}
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'cos'"):
        get("cos")
