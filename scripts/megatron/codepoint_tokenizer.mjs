// Writes a Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json) that is
// harness_model.py's CodepointTokenizer: one token per code point of the Basic Multilingual Plane
// (surrogates aside), eod = 0 and bos = 1 special. Given to `mcore coordinator --tokenizer` when
// the harness's engines (fake_engine.py) dial the project's coordinator (interop.sh --ours), so
// that it detokenizes and hashes as Megatron's coordinator does with CodepointTokenizer.
//
//   node codepoint_tokenizer.mjs DIR
import { mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const dir = process.argv[2]
if (!dir) {
  console.error("usage: codepoint_tokenizer.mjs DIR")
  process.exit(2)
}
const vocab = {}
for (let cp = 0; cp <= 0xffff; cp++) if (cp < 0xd800 || cp > 0xdfff) vocab[String.fromCodePoint(cp)] = cp
const special = (id) => ({
  id, content: String.fromCodePoint(id), single_word: false, lstrip: false, rstrip: false, normalized: false, special: true
})
const tokenizer = {
  version: "1.0",
  truncation: null,
  padding: null,
  added_tokens: [special(0), special(1)],
  normalizer: null,
  pre_tokenizer: { type: "Split", pattern: { Regex: "[\\s\\S]" }, behavior: "Isolated", invert: false },
  post_processor: null,
  decoder: { type: "Fuse" },
  model: { type: "WordLevel", vocab, unk_token: "\u0002" }
}
const config = {
  bos_token: "\u0001",
  eos_token: "\u0000",
  unk_token: "\u0002",
  clean_up_tokenization_spaces: false,
  model_max_length: 1 << 20,
  tokenizer_class: "PreTrainedTokenizerFast"
}
mkdirSync(dir, { recursive: true })
writeFileSync(join(dir, "tokenizer.json"), JSON.stringify(tokenizer))
writeFileSync(join(dir, "tokenizer_config.json"), JSON.stringify(config))
