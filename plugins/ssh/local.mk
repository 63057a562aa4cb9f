# plugins/ssh: the ssh backend (see man/hs-ssh.7).
