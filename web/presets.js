// The demo's presets: a prompt and a constraint each (a JSON Schema, a regex, a GBNF grammar, or
// OpenAI tools, of which the reply must call one).
export const PRESETS = [
  {
    id: "person",
    label: "Person (Pydantic-style object)",
    kind: "json_schema",
    prompt: "Describe a fictional software engineer named Ada as JSON.",
    maxTokens: 48,
    source: {
      title: "Person",
      type: "object",
      properties: {
        name: { type: "string", maxLength: 24 },
        age: { type: "integer", minimum: 18, maximum: 99 },
        email: { type: "string", format: "email" },
        skills: { type: "array", items: { type: "string", maxLength: 16 }, maxItems: 3 },
      },
      required: ["name", "age", "skills"],
      additionalProperties: false,
    },
  },
  {
    id: "form",
    label: "Support ticket (enum-heavy form)",
    kind: "json_schema",
    prompt: "My laptop screen flickers on Windows since the last update, every time. File a support ticket.",
    maxTokens: 40,
    source: {
      type: "object",
      properties: {
        category: { enum: ["hardware", "software", "network", "account", "other"] },
        priority: { enum: ["low", "medium", "high", "urgent"] },
        os: { enum: ["windows", "macos", "linux", "chromeos"] },
        reproducible: { type: "boolean" },
      },
      required: ["category", "priority", "os", "reproducible"],
      additionalProperties: false,
    },
  },
  {
    id: "tree",
    label: "File tree (recursive schema)",
    kind: "json_schema",
    prompt: "Show a tiny project folder with a src folder as a JSON tree.",
    maxTokens: 64,
    source: {
      $defs: {
        node: {
          type: "object",
          properties: {
            name: { type: "string", maxLength: 16 },
            children: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 3 },
          },
          required: ["name"],
          additionalProperties: false,
        },
      },
      $ref: "#/$defs/node",
    },
  },
  {
    id: "date",
    label: "ISO date (regex)",
    kind: "regex",
    prompt: "When did the first person land on the Moon? Answer with the date only.",
    maxTokens: 12,
    source: "(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])",
  },
  {
    id: "phone",
    label: "US phone number (regex)",
    kind: "regex",
    prompt: "Make up a phone number for a pizza place in Chicago.",
    maxTokens: 16,
    source: "\\([0-9]{3}\\) [0-9]{3}-[0-9]{4}",
  },
  {
    id: "arith",
    label: "Arithmetic (grammar)",
    kind: "grammar",
    prompt: "Write an arithmetic expression that equals 42.",
    maxTokens: 24,
    source: [
      "root   ::= expr",
      "expr   ::= term (ws [-+] ws term)*",
      "term   ::= factor (ws [*/] ws factor)*",
      'factor ::= [0-9]+ | "(" ws expr ws ")"',
      "ws     ::= \" \"?",
    ].join("\n"),
  },
  {
    id: "tools",
    label: "Tool call (weather, calculator)",
    kind: "tools",
    prompt: "What is the weather in Paris?",
    maxTokens: 48,
    source: [
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Get the current weather in a city",
          parameters: {
            type: "object",
            properties: { city: { type: "string", maxLength: 32 }, unit: { enum: ["celsius", "fahrenheit"] } },
            required: ["city"],
            additionalProperties: false,
          },
        },
      },
      {
        type: "function",
        function: {
          name: "calculate",
          description: "Evaluate an arithmetic expression",
          parameters: { type: "object", properties: { expression: { type: "string", maxLength: 40 } }, required: ["expression"], additionalProperties: false },
        },
      },
    ],
  },
];

/** The editor text of a preset's constraint. */
export function sourceText(preset) {
  return typeof preset.source === "string" ? preset.source : JSON.stringify(preset.source, null, 2);
}
