"""lsm.orchestration"""
