// Parse a WebVTT file with the W3C's WebVTT parser (npm webvtt-parser, the validator behind
// https://quuz.org/webvtt/) and print, as JSON, its errors, the number of cues and the cue language spans it read.
// Usage: NODE_PATH=<folder holding webvtt-parser> node tests/webvtt_check.js FILE.vtt
const { WebVTTParser } = require("webvtt-parser");
const fs = require("fs");

const tree = new WebVTTParser().parse(fs.readFileSync(process.argv[2], "utf8"), "subtitles/captions");
const langs = [];
function walk(node) {
  if (node.type === "object" && node.name === "lang") langs.push(node.value);
  (node.children || []).forEach(walk);
}
tree.cues.forEach((cue) => walk(cue.tree));
console.log(JSON.stringify({ errors: tree.errors.map((e) => `${e.message} (line ${e.line})`), cues: tree.cues.length, langs }));
