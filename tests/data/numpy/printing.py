# Kiln's NumPy subset against NumPy: array printing (str and repr) of many shapes, values
# and dtypes. Expected output: /usr/bin/python3 printing.py > printing.txt (numpy 1.24.2), but for the
# float16 scalars of the float16 line, which print as NumPy 2.3+ (checked under 2.5.2 on the device).
# Only what NumPy 2.x prints the same way is here; NumPy 2 differences (float32 arrays in
# scientific notation from 1e6, repr of a summarised array naming its shape) are checked in
# tests/python/test_python_numpy.cpp.
import numpy as np
vals = [
    [1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [1e-5, 1.0], [1e8, 1.0], [123456789.0], [1.5, -2.25, 3.125],
    [0.0, -0.0], [1e-10, 1e10], [3.14159265358979, 2.718281828459045], [1.0, float('nan'), float('inf'), -float('inf')],
    [float('nan')], [float('inf')], [-float('inf'), 1.5], [1000.0, 0.5], [1001.0, 1.0], [999.0, 1.0], 
    [0.00009999, 1.0], [1e16, 1.0], [-1e-5, 5.0], [100.0], [123.456, 0.001], [2.5e-8, 3.7e-8], [1.23456789012, 2.0],
    [0.3333333333333333, 0.6666666666666666], [1e300, 1e-300], [5e-324], [-1.0, -2.0], [12345678.9, 0.5],
]
for v in vals:
    a = np.array(v)
    print(a)
    print(repr(a))
    f = np.array(v, dtype=np.float32)
    print(f)
    print(repr(f))
ints = [[1, 2, 3], [-1, 100, 5], [0], [-7]]
for v in ints:
    print(np.array(v), repr(np.array(v)), repr(np.array(v, dtype=np.int32)))
print(np.array([True, False, True]), repr(np.array([True, False])), repr(np.array(True)), np.array(False))
print(repr(np.array(1.5)), repr(np.array(7)), repr(np.array(1e-7)), repr(np.array(2.5, dtype=np.float32)))
print(repr(np.array([])), repr(np.zeros((0, 3))), np.zeros((2, 0)), repr(np.zeros((0,), dtype=np.int32)))
print(np.arange(30).reshape(2, 3, 5))
print(repr(np.arange(30).reshape(2, 3, 5) / 7))
print(np.arange(100) / 3)
print(repr(np.arange(100) * 1.5))
print(repr(np.linspace(0, 1, 37)))
print(np.linspace(-1, 1, 7).reshape(7, 1))
x = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 11.5
print(x, repr(x))
print(repr(np.arange(60).reshape(3, 4, 5).astype(np.float32) * 1e-3))
print(repr(np.array([[1e-5, 2.0], [3.0, 4.0]], dtype=np.float32)))
print(np.array([[1, -2], [300, 4]]))
print(repr(np.array([0.1, 100000.5, 1e-3], dtype=np.float32)))
print(repr(np.array([1e-5, 1.2345678e-5], dtype=np.float32)))
print(repr(np.array([1e-5, 1.2345678e-5])))
print(repr(np.ones(20) * np.pi))
print(repr(np.ones((3, 30)) * 2.5))
print(repr(np.array([np.nan, 1e-20, 5.0])))
a = np.arange(2000)
print(a)
print(np.arange(1001) * 0.5)
print(np.arange(3000).reshape(30, 100))
print(np.arange(24000).reshape(20, 30, 40) / 7)
print(np.arange(1500).reshape(3, 500).astype(np.float32))
print(np.zeros((1001,), dtype=bool))
np.set_printoptions(precision=3)
print(np.array([1.23456789, 2.5]), repr(np.array([1e-5, 2.0])))
np.set_printoptions(suppress=True)
print(np.array([1e-5, 2.0, 3e4]), np.array([1e-9, 1.0]))
np.set_printoptions(precision=8, suppress=False, linewidth=40)
print(np.arange(30) / 3)
np.set_printoptions(linewidth=75, threshold=10, edgeitems=2)
print(np.arange(20), np.arange(20).reshape(4, 5))
np.set_printoptions(threshold=1000, edgeitems=3)
with np.printoptions(precision=2):
    print(np.array([3.14159, 2.71828]))
print(np.array([3.14159, 2.71828]))
print(np.array2string(np.array([1.5, 2.0]), separator=', '), np.array_repr(np.array([1, 2])), np.array_str(np.array([0.5])))
h = np.array([1.5, 2.25, 65504, 0.1], dtype=np.float16)
print(h, repr(h), h[3], h.dtype, h.sum(), h.mean())
print(repr(np.array([1, -2, 3], dtype=np.int8)), repr(np.array([1, 2], dtype=np.int16)), repr(np.array([255, 0], dtype=np.uint8)))
print(np.array([[1.5, np.nan], [np.inf, -np.inf]]), repr(np.array([np.nan, np.nan])), np.array([-np.inf, 5e-6]))
print(np.array([1e-30, 1e30]), np.array([[0.000123, 12345.678]]), np.array([1.0, 1.0000001]), np.array([100000000.0]))
print(np.array([0.1, 0.12, 0.123]), np.array([[1], [22], [333]]), np.array([[True], [False]]))
print(np.format_float_positional(np.float32(0.1)), np.format_float_positional(0.1, precision=3), np.format_float_scientific(123.456, precision=2))
