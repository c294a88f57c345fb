# codecs on str (the subset has no bytes): unicode_escape reads a str's UTF-8 as
# CPython's codec does (escapes decoded, other non-ASCII text turned into its
# bytes as Latin-1), and rot13 both ways.
import codecs
print(repr(codecs.decode(r'a\\b\101\x41\N{EM DASH}' + '\\\n' + r'\U0001F600\t\u00e9 é', 'unicode_escape')))
print(codecs.decode('\\t', encoding='unicode-escape') == '\t', codecs.decode('Uryyb', 'rot13'), codecs.encode('abc', 'rot_13'))
print(repr(str(codecs.decode('\t', "unicode_escape"))), repr(codecs.decode(r'\0\12\177', 'unicode_escape')))
