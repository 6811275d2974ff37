// The bundled model catalog: a verbatim copy of Models/models.json, compiled in so that a copied `xclaw` binary
// needs no resource files next to it. ModelCatalogTests fails when the two differ.

extension ModelCatalog {
    /// The text of Models/models.json.
    static let builtinJSON = #"""
        {
          "comment": "Model catalog xclaw loads: computer-use tool version and beta header per model, vision, output limit, and USD prices per million tokens (cache write = 5-minute writes). Users can add or override entries in ~/.config/xclaw/models.json (same shape). Sources: Anthropic's models and computer-use docs, checked 2026-11.",
          "default": "claude-sonnet-4-6",
          "models": [
            {"id": "claude-opus-4-7", "name": "Claude Opus 4.7", "computer_tool": "computer_20251124", "beta": "computer-use-2025-11-24", "vision": true, "max_output": 128000, "thinking": "adaptive", "price": {"input": 5, "output": 25, "cache_write": 6.25, "cache_read": 0.5}},
            {"id": "claude-opus-4-6", "name": "Claude Opus 4.6", "computer_tool": "computer_20251124", "beta": "computer-use-2025-11-24", "vision": true, "max_output": 128000, "thinking": "adaptive", "price": {"input": 5, "output": 25, "cache_write": 6.25, "cache_read": 0.5}},
            {"id": "claude-sonnet-4-6", "name": "Claude Sonnet 4.6", "computer_tool": "computer_20251124", "beta": "computer-use-2025-11-24", "vision": true, "max_output": 64000, "thinking": "adaptive", "price": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}},
            {"id": "claude-opus-4-5-20251101", "aliases": ["claude-opus-4-5"], "name": "Claude Opus 4.5", "computer_tool": "computer_20251124", "beta": "computer-use-2025-11-24", "vision": true, "max_output": 64000, "thinking": "enabled", "price": {"input": 5, "output": 25, "cache_write": 6.25, "cache_read": 0.5}},
            {"id": "claude-sonnet-4-5-20250929", "aliases": ["claude-sonnet-4-5"], "name": "Claude Sonnet 4.5", "computer_tool": "computer_20250124", "beta": "computer-use-2025-01-24", "vision": true, "max_output": 64000, "thinking": "enabled", "price": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}},
            {"id": "claude-haiku-4-5-20251001", "aliases": ["claude-haiku-4-5"], "name": "Claude Haiku 4.5", "computer_tool": "computer_20250124", "beta": "computer-use-2025-01-24", "vision": true, "max_output": 64000, "thinking": "enabled", "price": {"input": 1, "output": 5, "cache_write": 1.25, "cache_read": 0.1}},
            {"id": "claude-opus-4-1-20250805", "aliases": ["claude-opus-4-1"], "name": "Claude Opus 4.1", "computer_tool": "computer_20250124", "beta": "computer-use-2025-01-24", "vision": true, "max_output": 32000, "thinking": "enabled", "price": {"input": 15, "output": 75, "cache_write": 18.75, "cache_read": 1.5}},
            {"id": "claude-opus-4-20250514", "aliases": ["claude-opus-4-0"], "name": "Claude Opus 4", "computer_tool": "computer_20250124", "beta": "computer-use-2025-01-24", "vision": true, "max_output": 32000, "thinking": "enabled", "price": {"input": 15, "output": 75, "cache_write": 18.75, "cache_read": 1.5}},
            {"id": "claude-sonnet-4-20250514", "aliases": ["claude-sonnet-4-0"], "name": "Claude Sonnet 4", "computer_tool": "computer_20250124", "beta": "computer-use-2025-01-24", "vision": true, "max_output": 64000, "thinking": "enabled", "price": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}},
            {"id": "claude-3-7-sonnet-20250219", "aliases": ["claude-3-7-sonnet-latest"], "name": "Claude Sonnet 3.7", "computer_tool": "computer_20250124", "beta": "computer-use-2025-01-24", "vision": true, "max_output": 64000, "thinking": "enabled", "price": {"input": 3, "output": 15, "cache_write": 3.75, "cache_read": 0.3}}
          ]
        }
        """#
}
