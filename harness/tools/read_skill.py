"""Skills: markdown playbooks with front matter in harness/skills/.

Front matter: ``name``, ``description`` (the planner's catalog), ``keywords`` (words of a question the
skill fits: the planner picks a skill without a model call when they match) and ``steps`` (the tool
calls the executor runs before the model's turn: ``- tool: {arg: value}``, values may name
``$question``, ``$top_service``, ``$top_category_query``; harness/playbook.py). The body is the prose
plan the model and the user read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.tools.base import ToolResult

SKILLS_DIR = Path(__file__).resolve().parents[1] / "skills"


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    keywords: tuple[str, ...] = ()
    steps: tuple[tuple[str, dict[str, Any]], ...] = ()


def load_skills(directory: Path = SKILLS_DIR) -> dict[str, Skill]:
    skills: dict[str, Skill] = {}
    for path in sorted(directory.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        if not text.startswith("---"):
            raise ValueError(f"{path}: a skill starts with front matter (name, description)")
        _, front, body = text.split("---", 2)
        meta = yaml.safe_load(front) or {}
        name, desc = meta.get("name"), meta.get("description")
        if not isinstance(name, str) or not isinstance(desc, str):
            raise ValueError(f"{path}: front matter needs string 'name' and 'description'")
        steps = []
        for step in meta.get("steps") or []:
            if not (isinstance(step, dict) and len(step) == 1):
                raise ValueError(f"{path}: each step is one '- tool: {{args}}' mapping")
            ((tool, step_args),) = step.items()
            steps.append((str(tool), dict(step_args or {})))
        keywords = tuple(str(k).lower() for k in meta.get("keywords") or [])
        skills[name] = Skill(name, desc, body.strip(), keywords, tuple(steps))
    return skills


class ReadSkillTool:
    name = "read_skill"
    description = "Read a diagnosis playbook (skill) by name; the planner's selected_skill names one."
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "skill name from the catalog"}},
        "required": ["name"],
        "additionalProperties": False,
    }

    def __init__(self, skills: dict[str, Skill]) -> None:
        self.skills = skills

    async def run(self, args: dict[str, Any], call_id: str = "") -> ToolResult:
        name = str(args.get("name", ""))
        skill = self.skills.get(name)
        if skill is None:
            return ToolResult(
                "no_data", {"error": f"no skill {name!r}", "available": sorted(self.skills)}, preview=f"no skill {name}"
            )
        return ToolResult("success", {"name": skill.name, "content": skill.body}, preview=f"skill {name}")
