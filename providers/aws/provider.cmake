# AWS: EC2 over SigV4 (docs/providers/aws.md); sells the EFA fabric.
gpuctl_provider(aws SOURCES aws.c cleanup.c eip.c orphans.c instances.c launch.c live_prices.c network.c
                prices.c quota.c region.c config.c credentials.c imds.c ec2.c json_api.c pricelist.c
                sigv4.c s3.c s3_object.c s3_multipart.c ssh.c logs.c store.c iam.c NODE_SCRIPT node.sh
                FABRIC efa efa.sh)
