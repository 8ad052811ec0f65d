"""lsm.desired_state"""
