"""AgentDojo's suites through the proxy: its tasks and attacks as items, a runner that plays them
with the suite's tools, and its own utility and security checks as the reward.

The agentdojo package imports every vendor's client (anthropic, cohere, google-genai, openai) and
registers its four suites at import: about 7 s of CPU on a busy machine, paid only when an
AgentDojo dataset, runner or reward is used, never at agent_eval's import.
"""
