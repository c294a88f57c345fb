# Lone surrogates and characters past U+FFFF count as one character everywhere:
# len, indexing, format widths and fills, repr, ord, and json's escapes.
import json
s = '\udc80'
print(len(s), repr(s), ord(s[0]), f"[{s:>3}]" == "[  " + s + "]", len(f"{s:^5}"))
t = 'a\U0001f600b\udc81'
print(len(t), repr(t), [ord(c) for c in t], t[1] == '\U0001f600', t[-1] == '\udc81')
print('%-4s|' % 'é', '{:*^7}'.format('ßü'), repr('é' * 3), json.dumps('caf\u00e9 \U0001f600'))
print(repr('tab\there\x7f\x00'), ascii('é\udc80'))
