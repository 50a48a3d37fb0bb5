import fs from "node:fs";
import path from "node:path";

// Writes a tiny but real sentence-embedding model in the layout @xenova/transformers expects
// (config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx): a WordPiece tokenizer over
// letters and a few words, and an ONNX graph that looks token embeddings up and masks padding. It lets
// the xenova adapter run its full code path offline; nothing here is downloaded.

function varint(n: number): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, BigInt(n));
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
const int = (field: number, n: number) => [...key(field, 0), ...varint(n)];
const bytes = (field: number, b: ArrayLike<number>) => [...key(field, 2), ...varint(b.length), ...Array.from(b)];
const str = (field: number, s: string) => bytes(field, Buffer.from(s, "utf8"));
const msg = (field: number, parts: number[][]) => bytes(field, parts.flat());

const FLOAT = 1;
const INT64 = 7;

function valueInfo(field: number, name: string, elemType: number, dims: Array<number | string>): number[] {
  const dim = dims.map((d) => msg(1, [typeof d === "number" ? int(1, d) : str(2, d)]));
  const tensorType = msg(1, [int(1, elemType), msg(2, dim)]);
  return msg(field, [str(1, name), msg(2, [tensorType])]);
}

function tensor(name: string, dims: number[], type: number, raw: Buffer): number[] {
  return msg(5, [...dims.map((d) => int(1, d)), int(2, type), str(8, name), bytes(9, raw)]);
}

function node(op: string, inputs: string[], outputs: string[], attrs: number[][] = []): number[] {
  return msg(1, [...inputs.map((i) => str(1, i)), ...outputs.map((o) => str(2, o)), str(3, `${op}_${outputs[0]}`), str(4, op), ...attrs]);
}

/** Creates `<dir>/<model>/…` and returns the model's directory. */
export function writeTinyModel(modelsDir: string, model = "test/tiny-embed", dims = 32): string {
  const dir = path.join(modelsDir, model);
  fs.mkdirSync(path.join(dir, "onnx"), { recursive: true });
  const letters = "abcdefghijklmnopqrstuvwxyz0123456789".split("");
  const words = ["user", "role", "parse", "session", "token", "render", "dashboard", "chart", "class", "function", "return"];
  const vocabList = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", ...letters, ...letters.map((l) => `##${l}`), ...words];
  const vocab = Object.fromEntries(vocabList.map((t, i) => [t, i]));
  const special = (content: string, id: number) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true });
  fs.writeFileSync(
    path.join(dir, "tokenizer.json"),
    JSON.stringify({
      version: "1.0",
      truncation: null,
      padding: null,
      added_tokens: [special("[PAD]", 0), special("[UNK]", 1), special("[CLS]", 2), special("[SEP]", 3)],
      normalizer: { type: "BertNormalizer", clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
      pre_tokenizer: { type: "BertPreTokenizer" },
      post_processor: {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "[CLS]", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "[SEP]", type_id: 0 } }],
        pair: [
          { SpecialToken: { id: "[CLS]", type_id: 0 } },
          { Sequence: { id: "A", type_id: 0 } },
          { SpecialToken: { id: "[SEP]", type_id: 0 } },
          { Sequence: { id: "B", type_id: 1 } },
          { SpecialToken: { id: "[SEP]", type_id: 1 } },
        ],
        special_tokens: {
          "[CLS]": { id: "[CLS]", ids: [2], tokens: ["[CLS]"] },
          "[SEP]": { id: "[SEP]", ids: [3], tokens: ["[SEP]"] },
        },
      },
      decoder: { type: "WordPiece", prefix: "##", cleanup: true },
      model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab },
    }),
  );
  fs.writeFileSync(
    path.join(dir, "tokenizer_config.json"),
    JSON.stringify({
      tokenizer_class: "BertTokenizer",
      do_lower_case: true,
      model_max_length: 128,
      pad_token: "[PAD]",
      unk_token: "[UNK]",
      cls_token: "[CLS]",
      sep_token: "[SEP]",
    }),
  );
  fs.writeFileSync(
    path.join(dir, "config.json"),
    JSON.stringify({ model_type: "bert", architectures: ["BertModel"], hidden_size: dims, vocab_size: vocabList.length, max_position_embeddings: 128 }),
  );

  // Deterministic pseudo-random embedding table; special tokens embed to zero so they do not dominate.
  const V = vocabList.length;
  const w = Buffer.alloc(V * dims * 4);
  let seed = 12345;
  for (let i = 0; i < V; i++) {
    for (let j = 0; j < dims; j++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      w.writeFloatLE(i < 4 ? 0 : (seed / 2 ** 32) * 2 - 1, (i * dims + j) * 4);
    }
  }
  const axes = Buffer.alloc(8);
  axes.writeBigInt64LE(-1n);
  const graph = [
    node("Gather", ["embeddings", "input_ids"], ["emb"]),
    node("Cast", ["attention_mask"], ["maskf"], [msg(5, [str(1, "to"), int(3, FLOAT), int(20, 2)])]),
    node("Unsqueeze", ["maskf", "axes"], ["mask3"]),
    node("Mul", ["emb", "mask3"], ["last_hidden_state"]),
    str(2, "tiny"),
    tensor("embeddings", [V, dims], FLOAT, w),
    tensor("axes", [1], INT64, axes),
    valueInfo(11, "input_ids", INT64, ["batch", "seq"]),
    valueInfo(11, "attention_mask", INT64, ["batch", "seq"]),
    valueInfo(12, "last_hidden_state", FLOAT, ["batch", "seq", dims]),
  ];
  const proto = [int(1, 7), str(2, "ledgerloop-test"), msg(7, graph), msg(8, [str(1, ""), int(2, 13)])];
  fs.writeFileSync(path.join(dir, "onnx", "model.onnx"), Buffer.from(proto.flat()));
  return dir;
}
