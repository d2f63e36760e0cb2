"""How ranks run a scenario: rank pools of live processes, simulated and in real process
groups, the messages between them, the fork servers, and who is to blame for a failure.
"""
