"""agent_core"""
