"""lsm.lifecycle"""
