// eslint's flat config for the page's ES modules (run by `make test`: npx eslint web).
// The recommended rules, browser and worker globals; Pyodide and uPlot come from node_modules.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["node_modules/**", "build/**", "vendor/**"] },
  js.configs.recommended,
  {
    files: ["**/*.js"],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: "module",
      globals: { ...globals.browser, ...globals.worker },
    },
    rules: {
      "no-unused-vars": ["error", { args: "after-used", argsIgnorePattern: "^_",
                                  varsIgnorePattern: "^_", caughtErrors: "none" }],
    },
  },
];
