# AWS: EC2 over SigV4 (docs/providers/aws.md).
gpuctl_provider(aws SOURCES aws.c config.c ec2.c sigv4.c NODE_SCRIPT node.sh)
