# NumPy string arrays, as the gcn example builds its labels (np.genfromtxt with
# dtype=np.dtype(str) stays refused: a file read). Expected output written by hand
# from NumPy 2's rules; each line says what it checks.
import numpy as np, torch
c = np.array([["7", "1", "0", "Theory"], ["31", "0", "1", "Neural_Networks"], ["12", "1", "1", "Theory"]])
# repr: quoted elements, unpadded, dtype='<U15' (the longest string)
print(repr(c))
# str: elements separated by spaces
print(c)
# dtype str/repr, shape, len, ndim, size, itemsize (4 bytes a character), nbytes
print(c.dtype, repr(c.dtype), c.shape, len(c), c.ndim, c.size, c.itemsize, c.nbytes)
# a column keeps the dtype; its elements print as str (their repr would not:
# Kiln's elements are str, NumPy's np.str_)
lab = c[:, -1]
print(repr(lab), lab[0], lab[1], len(lab[1]))
# np.unique sorts the strings; the inverse indexes them
u, inv = np.unique(lab, return_inverse=True)
print(repr(u), repr(inv), torch.LongTensor(inv))
# numeric strings cast to int32 and float
f = c[:, 1:-1].astype(np.int32)
print(repr(f), repr(c[:, 0].astype(float)))
print(torch.FloatTensor(f))
# np.dtype(str) is the flexible '<U'; '<U6' is named str192
print(np.dtype(str), repr(np.dtype(str)), repr(np.dtype('<U6')), np.dtype('<U6').name)
# == and != with a str compare element by element
print(repr(lab == "Theory"), repr(lab != "Theory"), repr(np.array(['a', 'bb'])), np.array(['a', 'bb']), lab.tolist())
