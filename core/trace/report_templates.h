#pragma once
// The Mustache templates of `kiln-cli trace report` (report_templates.cpp).
// Internal to core/trace.
namespace kiln::trace::report_templates {

extern const char* const kHead;      // partial "head": the document head and style; {{page_title}}
extern const char* const kFoot;      // partial "foot"; {{source}}
extern const char* const kTrieNode;  // partial "trie_node", recursive
extern const char* const kIndex;     // index.html
extern const char* const kCompile;   // c/N.html
extern const char* const kPayload;   // c/N/K.html

}  // namespace kiln::trace::report_templates
