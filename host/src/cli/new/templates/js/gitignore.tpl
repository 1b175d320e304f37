/node_modules
/dist
