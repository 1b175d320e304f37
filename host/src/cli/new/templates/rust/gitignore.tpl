/target
