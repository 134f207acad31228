"""LatentSeek's self-reward (Li et al., arXiv 2505.13308): the frozen model judges its own solution.

The paper scores a candidate with the model itself through four verifier prompts (after Multi-Agent
Verification): calculation check (weight 2), answer correct (1), answer completeness (2) and understanding
check (1). Each prompt shows the question and the proposed solution and asks for a verdict written after
``FINAL VERIFICATION ANSWER IS:``; the model answers it in its own chat template (user turn, generation
prompt), and the verdict is the ``True``/``False`` after the last such marker (asterisks dropped; a missing or
unreadable verdict is a disapproval). The reward is minus the weight of the disapproving verifiers over
the total weight, in [-1, 0]: with the default threshold -0.2, LatentSeek stops once at most the
answer-correct or the understanding verifier (weight 1 of 6) disapproves.

Differences from the paper's code, on purpose: verdicts are decoded greedily (deterministic; the code
used the model's default sampling settings), the four prompts go through the model in one batch, and a
prompt that does not fit the model's context is a clear error (use ``--reward psrm``) rather than a
truncation. A tiny model cannot judge anything: the self-reward is meant for real instruction or reasoning
models (the zoo's formats default to PSRM). :class:`SelfConfidence` is a gold-free reward a tiny model can
compute: the probability of the least likely token of its own chain.

Example:
    >>> verdict("Let me check. 2 + 2 = 4.\\nFINAL VERIFICATION ANSWER IS: **True**")
    True
    >>> verdict("FINAL VERIFICATION ANSWER IS: False. Wait, it is right."), verdict("no verdict")
    (False, False)
    >>> self_reward_value({"calculation_check": True, "answer_correct": False, "answer_completeness": True,
    ...                    "understanding_check": True})
    -0.16666666666666666
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from thinklens.engine.tokenization import prompt_ids
from thinklens.errors import ThinklensError, opt

if TYPE_CHECKING:
    from thinklens.data.formats import PromptFormat
    from thinklens.engine.model import HookedModel

#: What a verifier writes before its verdict.
VERDICT_MARKER = "FINAL VERIFICATION ANSWER IS:"

#: The verifiers and their weights in the reward (the paper's).
VERIFIER_WEIGHTS: dict[str, int] = {
    "calculation_check": 2,
    "answer_correct": 1,
    "answer_completeness": 2,
    "understanding_check": 1,
}

_SYSTEM = ("You are a critical verifier tasked with evaluating mathematical problem-solving. You will be presented "
           "with a question and a proposed solution. Your job is to carefully go over and analyze the solution. "
           "Follow the instructions.")
_T, _F = f"'{VERDICT_MARKER}True'", f"'{VERDICT_MARKER}False'"

#: The instructions of each verifier (the paper's prompts), after the question and the proposed solution.
VERIFIER_INSTRUCTIONS: dict[str, str] = {
    "calculation_check": (
        "INSTRUCTIONS:\n"
        "1. EXTRACT CALCULATION EXPRESSIONS: Extract all the mathematical calculations from the PROPOSED SOLUTION.\n"
        "2. INDEPENDENT RECOMPUTATION: Break down the calculations step-by-step and recompute them.\n"
        f"3. VERIFY: Compare your recomputation with the PROPOSED SOLUTION. If any discrepancy is found, output {_F}. "
        f"If all steps are correct, output {_T}.\n\n"
        "NOTE: You ONLY need to check calculations(like 1 + 1 = 2, 2 * 3 = 6, etc). Ignore standalone numbers(like 1, 2, "
        "3, etc) that are not part of a computation.\n\n"
    ),
    "answer_correct": (
        "INSTRUCTIONS:\n"
        "Your task is to determine whether the provided answer is correct.\n"
        "Think through the verification process carefully and logically.\n"
        "IMPORTANT RULES:\n"
        "1. Do NOT analyze the steps or methods used to arrive at the answer.\n"
        "2. Only evaluate the final answer's correctness.\n"
        "3. Your response must strictly follow the required format:\n"
        f"- If the answer is correct, respond with: {_T}.\n"
        f"- If the answer is incorrect, respond with: {_F}.\n"
    ),
    "answer_completeness": (
        "INSTRUCTIONS:\n"
        "Your task is to verify whether the solution provides a complete and final answer.\n"
        "Follow these rules carefully:\n"
        "1. Check if the solution reaches a clear and definitive final answer.\n"
        "2. The answer must not be left incomplete, such as:\n"
        "   - Ending with an unresolved expression or formula instead of a computed result.\n"
        "   - Missing a conclusion or final statement explicitly stating the final answer.\n"
        "3. If the solution is incomplete or lacks a final answer, immediately stop checking further and respond in the "
        "exact format:\n"
        f"   - {_F}\n"
        "4. If the solution is complete and provides a final, explicit answer, respond in the exact format:\n"
        f"   - {_T}\n"
        "Examples:\n"
        "Example 1:\n"
        "final answer: 8.\n"
        f"Your response: {_T} (The solution provides a final, definitive answer of 8.)\n"
        "Example 2:\n"
        "final answer: The area of the circle is πr², where r = 4.\n"
        f"Your response: {_F} (The answer ends with an unresolved formula, not a computed result.)\n"
        "Example 3:\n"
        "final answer: This question does not have an answer./I cannot solve this problem.\n"
        f"Your response: {_F} (The solution lacks a clear, final answer.)\n"
    ),
    "understanding_check": (
        "INSTRUCTIONS:\n"
        "1. PROBLEM INTERPRETATION:\n"
        "   - Assess if the proposed solution clearly understands the problem statement.\n"
        "   - Ensure that the proposed solution addresses all relevant aspects of the problem, without ignoring any key "
        "detail.\n"
        "   - Flag if the solution misinterprets or overlooks the problem's core requirements or scope.\n\n"
        "2. ALIGNMENT WITH THE TASK:\n"
        "   - Verify that the solution responds to the specific question or task outlined in the problem statement.\n"
        "   - Ensure that the solution does not deviate from the problem’s context or provides an unrelated answer.\n"
        "   - Check if any critical parts of the problem have been misinterpreted or neglected.\n\n"
        "3. TERMINATION PROTOCOL:\n"
        "   - If the solution clearly misinterprets or fails to address the problem correctly, stop and respond in the "
        "exact format:\n"
        f"     - {_F}\n"
        "   - If the solution accurately captures the problem statement and aligns with the required solution, respond "
        "in the exact format:\n"
        f"     - {_T}\n"
        "EXAMPLES:\n"
        "[Case 1] Problem: A shop is selling a drink at 1.5 times the original price. If the original price is $10, what "
        "is the new price?\n"
        "  Solution: The new price is 1.15 * $10 = $11.50.\n"
        "  Assessment: The solution misinterprets the problem by calculating 1.15 times the original price instead of "
        "1.5 times.\n"
        f"  Result: {_F}\n\n"
        "[Case 2] Problem: The second cup of coffee is half price. If the first cup costs $5, how much is the second cup?\n"
        "  Solution: The second cup costs $5 * 0.5 = $2.50.\n"
        "  Assessment: The solution correctly interprets the price as half the original price for the second cup.\n"
        f"  Result: {_T}\n\n"
        "[Case 3] Problem: A pizza has a radius of 8 inches. What is the area of the pizza?\n"
        "  Solution: The area is π * r², where r = 4 inches. The area is 16π square inches.\n"
        "  Assessment: The solution misinterprets the formula for the area of a circle by using the radius incorrectly.\n"
        f"  Result: {_F}\n\n"
        "[Case 4] Problem: A train is moving at 60 km/h towards the east. What is its velocity after 2 hours?\n"
        "  Solution: The velocity is 120 km/h west.\n"
        "  Assessment: The solution correctly calculates the speed, but misinterprets the direction as west instead of "
        "east.\n"
        f"  Result: {_F}\n\n"
        "CRITICAL REQUIREMENTS:\n"
        "- Assess whether the solution addresses all parts of the problem.\n"
        "- Ensure the solution does not deviate from the problem’s intent.\n"
        "- Use exact output formats specified, showing no tolerance for misinterpretations."
    ),
}


def verifier_prompt(name: str, question: str, solution: str) -> str:
    """The user message of verifier ``name`` for one question and proposed solution.

    Example:
        >>> p = verifier_prompt("answer_correct", "What is 2 + 2?", "2 + 2 = 4. The answer is 4.")
        >>> "QUESTION:\\nWhat is 2 + 2?" in p and p.endswith(f"respond with: '{VERDICT_MARKER}False'.\\n")
        True
    """
    if name not in VERIFIER_INSTRUCTIONS:
        raise ThinklensError.of("verifier", name, f"one of {', '.join(VERIFIER_INSTRUCTIONS)}", "use a verifier of the paper")
    return f"{_SYSTEM}\n\nQUESTION:\n{question}\n\nPROPOSED SOLUTION:\n{solution}\n\n{VERIFIER_INSTRUCTIONS[name]}"


def verdict(response: str) -> bool:
    """A verifier's approval: ``True``/``False`` after the last :data:`VERDICT_MARKER` (case and asterisks ignored);
    no marker, or neither word there, is a disapproval."""
    at = response.lower().rfind(VERDICT_MARKER.lower())
    if at < 0:
        return False
    rest = response[at + len(VERDICT_MARKER):].replace("*", "").lower()
    return "true" in rest  # the paper's reading: "true" anywhere after the marker approves


def self_reward_value(approvals: dict[str, bool]) -> float:
    """Minus the weight of the disapproving verifiers over the total weight (in [-1, 0])."""
    total = sum(VERIFIER_WEIGHTS[name] for name in approvals)
    return -sum(VERIFIER_WEIGHTS[name] for name, ok in approvals.items() if not ok) / total


class SelfReward:
    """The paper's self-reward as a LatentSeek reward: ``reward.for_question(q)(text, gold)`` (the gold is ignored).

    Args:
        model: the frozen model (the one LatentSeek optimises).
        fmt: how the model is prompted: its chat template (the verifier prompt is the user turn, without the
            problem format's instruction line), or the bare prompt for a model without one.
        max_new_tokens: budget of each verdict (the paper's code: 4096; capped by the model's context).
    """

    def __init__(self, model: "HookedModel", fmt: "PromptFormat", *, max_new_tokens: int = 4096, question: str = ""):
        self.model, self.max_new_tokens, self.question = model, max_new_tokens, question
        self.format = replace(fmt, instruction="") if fmt.name == "chat" else fmt

    def for_question(self, question: str) -> "SelfReward":
        """The reward of one problem (its question shown to the verifiers)."""
        return SelfReward(self.model, self.format, max_new_tokens=self.max_new_tokens, question=question)

    def prompts(self, solution: str) -> list[str]:
        """The four verifier prompts in the model's format."""
        texts = [verifier_prompt(name, self.question, solution) for name in VERIFIER_WEIGHTS]
        if self.format.name == "chat":
            return [self.format.render(t, self.model.tokenizer) for t in texts]
        return texts

    def judge(self, solution: str) -> dict[str, bool]:
        """Each verifier's approval of ``solution`` (the model generates the four verdicts greedily, in one batch)."""
        prompts = self.prompts(solution)
        budget = self.max_new_tokens
        ctx = self.model.max_context
        if ctx is not None:
            longest = max(len(ids) for ids in prompt_ids(self.model.tokenizer, prompts))  # as generate reads them
            budget = min(budget, ctx - longest)
            if budget < 1:
                raise ThinklensError.of("self-reward prompt", f"{longest} tokens", f"fewer than the model's context ({ctx})",
                                        f"pass {opt('reward', 'psrm')} (the gold answers), or use a model with a longer context")
        traces = self.model.generate(prompts, max_new_tokens=budget)
        return {name: verdict(tr.text) for name, tr in zip(VERIFIER_WEIGHTS, traces)}

    def __call__(self, text: str, gold: Any = None) -> float:
        return self_reward_value(self.judge(text))



class SelfConfidence:
    """A gold-free reward a tiny model can compute: its probability of the least likely token of its own chain, minus 1.

    The paper's verifiers need a model that reads English instructions (and, on the zoo, a 665-token prompt in a
    256-token context); this is the model's own check without them: ``reward = min_t p(x_t | prompt, x_<t) - 1`` in
    [-1, 0] over the chain's tokens (re-tokenised from its text), so with the default threshold -0.2 LatentSeek stops
    once every token had probability > 0.8. Bound to a problem by ``for_prompt(prompt_text)``; the gold is ignored.
    """

    def __init__(self, model: "HookedModel", prompt: str = ""):
        self.model, self.prompt = model, prompt

    def for_prompt(self, prompt: str) -> "SelfConfidence":
        """The reward of one problem (the chain is scored after this prompt)."""
        return SelfConfidence(self.model, prompt)

    def token_probabilities(self, text: str) -> "list[float]":
        """p(x_t | prompt, x_<t) of each token of ``text`` (teacher forcing, one forward pass)."""
        tok = self.model.tokenizer
        prompt = prompt_ids(tok, self.prompt)  # as generate reads it: one BOS
        chain = tok(text, add_special_tokens=False)["input_ids"]
        if not chain:
            return []
        logits = self.model.forward_with(torch.tensor([prompt + chain]))[0].float()  # [pos, vocab]
        logp = torch.log_softmax(logits[len(prompt) - 1: -1], -1)  # the state before each chain token
        return logp.gather(1, torch.tensor(chain, device=logp.device)[:, None])[:, 0].exp().tolist()

    def __call__(self, text: str, gold: Any = None) -> float:
        probs = self.token_probabilities(text)
        return min(probs) - 1.0 if probs else -1.0
