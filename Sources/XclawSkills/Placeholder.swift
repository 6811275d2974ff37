/// Placeholder: replaced by the skills.
enum SkillsPlaceholder {}
