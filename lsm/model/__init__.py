"""lsm.model"""
