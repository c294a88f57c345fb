# io.StringIO as an in-memory corpus file and as a write buffer.
import io

corpus = io.StringIO("the quick brown fox\njumps over\n\nthe lazy dog")
lines = [line for line in corpus]
print(lines, corpus.tell(), corpus.read())
corpus.seek(4)
print(repr(corpus.read(5)), repr(corpus.readline()), corpus.readlines())
out = io.StringIO()
print("loss", 0.5, file=out)
out.write("step 1\n")
print(repr(out.getvalue()), out.tell())
out.seek(0)
out.write("LOSS")
print(repr(out.getvalue()))
out.seek(0, io.SEEK_END)
print(out.tell(), out.truncate(4), repr(out.getvalue()))
with io.StringIO("a\nb") as f:
    print(f.readlines())
try:
    f.read()
except ValueError as e:
    print("closed:", e)
try:
    out.write(3)
except TypeError as e:
    print(e)
