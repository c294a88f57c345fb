// The Mustache templates of `kiln-cli trace report` (report.cpp fills them).
// Every {{value}} is HTML-escaped by the library; nothing is pasted in raw.
// Each list item defines every name its section uses: Mustache looks a
// missing name up in the enclosing context, and a trie node without its own
// "children" would find its parent's.
#include "core/trace/report_templates.h"

namespace kiln::trace::report_templates {

const char* const kHead = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{page_title}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em 2em; color: #1d1d1f; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0; } td, th { border: 1px solid #ddd; padding: 2px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } .meta { color: #666; } pre { background: #f7f7f7; padding: .6em; overflow-x: auto; }
tr.error td:first-child, a.error { color: #b00020; font-weight: 600; } tr.break td:first-child, a.break { color: #a05a00; }
tr.empty td:first-child, a.empty { color: #888; } a.ok { color: #116611; }
.trie, .trie ul { list-style: none; padding-left: 1.2em; } .frame { font-family: monospace; }
pre.code span { display: block; white-space: pre; } pre.code a { color: #999; display: inline-block; width: 5em; text-align: right; margin-right: 1em; text-decoration: none; }
pre.code span:target { background: #fff3a0; } .note { color: #a05a00; }
</style>
</head>
<body>
)";

const char* const kFoot = R"(<p class="meta">Written by Kiln from {{source}}.</p>
</body>
</html>
)";

const char* const kTrieNode = R"(<li><span class="frame">{{frame}}</span>{{#compiles}} <a class="{{status}}" href="{{href}}">[{{label}}]</a>{{/compiles}}{{#has_children}}
<ul>{{#children}}{{> trie_node}}{{/children}}</ul>{{/has_children}}</li>
)";

const char* const kIndex = R"({{> head}}<h1>{{title}}</h1>
<p class="meta">{{kind}} · {{file_count}} · {{size}} · {{records}} records</p>
<p>{{totals}}</p>
{{#has_ranks}}<h2>Ranks</h2>
<pre>{{rank_text}}</pre>
{{/has_ranks}}{{#has_trie}}<h2>Where the compiles came from</h2>
<ul class="trie">{{#trie}}{{> trie_node}}{{/trie}}</ul>
{{/has_trie}}<h2>Compile ids</h2>
{{#rank_sections}}{{#has_name}}<h3>{{name}}</h3>{{/has_name}}
<table>
<tr><th>compile</th><th>function</th><th>where</th><th>status</th><th>graph breaks</th><th>failure</th><th>restarts</th><th>recompile reasons</th><th>cache</th><th>compile time</th><th>guards</th></tr>
{{#compiles}}<tr class="{{status}}"><td><a href="{{href}}">{{label}}</a></td><td>{{function}}</td><td>{{where}}</td><td>{{status}}</td><td>{{breaks}}</td><td>{{failure}}</td><td>{{restarts}}</td><td>{{recompiles}}</td><td>{{cache}}</td><td>{{time}}</td><td>{{guards}}</td></tr>
{{/compiles}}</table>
{{/rank_sections}}{{#has_failures}}<h2>Failures and restarts</h2>
<table>
<tr><th>compile</th><th>kind</th><th>what</th><th>where</th></tr>
{{#failures}}<tr><td><a href="{{href}}">{{label}}</a></td><td>{{kind}}</td><td><pre>{{text}}</pre></td><td>{{where}}</td></tr>
{{/failures}}</table>
{{/has_failures}}{{#has_diagnostics}}<h2>Diagnostics</h2>
<p>Lines of the input Kiln could not read; the rest of the report stands.</p>
<ul>{{#diagnostics}}<li>{{file}}:{{line}}: {{message}}</li>{{/diagnostics}}</ul>
{{/has_diagnostics}}{{#has_unknown}}<h2>Records Kiln does not model</h2>
<ul>{{#unknown}}<li>{{tag}}: {{count}}</li>{{/unknown}}</ul>
{{/has_unknown}}{{> foot}})";

const char* const kCompile = R"({{> head}}<p><a href="../index.html">index</a></p>
<h1>{{heading}}</h1>
<p class="meta">{{function}} {{where}} · status {{status}} · log {{log}}:{{log_line}}</p>
{{#has_stack}}<h2>Stack</h2>
<ol>{{#stack}}<li><span class="frame">{{text}}</span></li>{{/stack}}</ol>
{{/has_stack}}<h2>Stages and artifacts</h2>
<table>
<tr><th>name</th><th>kind</th><th>nodes</th><th>ops</th><th>log line</th><th></th></tr>
{{#stages}}<tr><td><a href="{{href}}">{{name}}</a></td><td>{{kind}}</td><td>{{nodes}}</td><td>{{ops}}</td><td>{{line}}</td><td>{{note}}</td></tr>
{{/stages}}</table>
{{#has_breaks}}<h2>Graph breaks and failures</h2>
{{#breaks}}<h3>{{kind}}: {{reason}}</h3>
<p>{{where}} · log line {{log_line}}</p>
{{#has_detail}}<pre>{{detail}}</pre>{{/has_detail}}{{#has_user_stack}}<ol>{{#user_stack}}<li><span class="frame">{{text}}</span></li>{{/user_stack}}</ol>{{/has_user_stack}}
{{/breaks}}{{/has_breaks}}{{#has_restarts}}<h2>Restarts</h2>
{{#restarts}}<pre>{{text}}</pre>
{{/restarts}}{{/has_restarts}}{{#has_recompile_reasons}}<h2>Recompile reasons</h2>
{{#recompile_reasons}}<pre>{{text}}</pre>
{{/recompile_reasons}}{{/has_recompile_reasons}}{{#has_cache}}<h2>Cache</h2>
<ul>{{#cache}}<li>{{text}}</li>{{/cache}}</ul>
{{/has_cache}}{{#has_guards}}<p>Guards: {{guards}}</p>
{{/has_guards}}{{#has_shapes}}<h2>Symbolic shapes and guards added</h2>
<table>
<tr><th>record</th><th>what</th><th>where</th></tr>
{{#shapes}}<tr><td>{{kind}}</td><td>{{text}}</td><td>{{where}}</td></tr>
{{/shapes}}</table>
{{/has_shapes}}{{#has_metrics}}<h2>Compilation metrics</h2>
<table>
{{#metrics}}<tr><td>{{key}}</td><td>{{value}}</td></tr>
{{/metrics}}</table>
{{/has_metrics}}{{#has_phases}}<h2>Phases (chromium events)</h2>
<table>
<tr><th>name</th><th>phase</th><th>ts (µs)</th><th>duration (µs)</th><th>log line</th></tr>
{{#phases}}<tr><td>{{name}}</td><td>{{phase}}</td><td>{{ts}}</td><td>{{dur}}</td><td>{{line}}</td></tr>
{{/phases}}</table>
{{/has_phases}}{{> foot}})";

const char* const kPayload = R"({{> head}}<p><a href="../../index.html">index</a> · <a href="../{{compile_page}}">{{label}}</a></p>
<h1>{{name}}</h1>
<p class="meta">{{kind}} · log {{log}}:{{line}} · {{line_count}} lines</p>
{{#has_note}}<p class="note">{{note}}</p>
{{/has_note}}<pre class="code">{{#lines}}<span id="L{{n}}"><a href="#L{{n}}">{{n}}</a>{{text}}</span>{{/lines}}</pre>
{{> foot}})";

}  // namespace kiln::trace::report_templates
