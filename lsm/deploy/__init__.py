"""lsm.deploy"""
