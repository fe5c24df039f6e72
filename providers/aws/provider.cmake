# AWS: EC2 over SigV4 (docs/providers/aws.md).
gpuctl_provider(aws SOURCES aws.c config.c ec2.c prices.c sigv4.c)
