// Naming a project on the command line: id, subdomain or name; ambiguity and typos.
import { describe, expect, it } from 'vitest';
import type { Project } from '../../../src/shared/api/index.js';
import {
  ProjectNotFoundError,
  closeMatches,
  editDistance,
  findProject,
} from '../../../src/cli/find-project.js';

let n = 0;
function project(name: string, subdomain: string): Project {
  n += 1;
  return {
    id: `prj_${String(n).padStart(20, '0')}`,
    name,
    subdomain,
    repo_url: '',
    git_host_repo: '',
    branch: '',
    image: 'nginx',
    deploy_source: 'image',
    env_vars: {},
    build_config: {
      root_dir: '.',
      install_cmd: null,
      build_cmd: null,
      start_cmd: null,
      port_override: null,
      replicas: 1,
      services: [],
    },
    status: 'created',
    url: `http://${subdomain}.localhost:8788`,
    service_urls: {},
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    last_deploy_at: null,
    last_deploy_error: null,
  };
}

const shop = project('Shop', 'shop');
const shopApi = project('Shop API', 'shop-api');
const blogA = project('Blog', 'blog-one');
const blogB = project('Blog', 'blog-two');
const named = project('api', 'other'); // a name equal to no subdomain but close to one
const all = [shop, shopApi, blogA, blogB, named];

function failure(projects: Project[], query: string): string {
  try {
    findProject(projects, query);
  } catch (error) {
    expect(error).toBeInstanceOf(ProjectNotFoundError);
    return (error as Error).message;
  }
  throw new Error(`"${query}" was found`);
}

describe('findProject', () => {
  it('finds a project by id, subdomain or name', () => {
    expect(findProject(all, shopApi.id)).toBe(shopApi);
    expect(findProject(all, 'shop-api')).toBe(shopApi);
    expect(findProject(all, 'Shop API')).toBe(shopApi);
    expect(findProject(all, 'blog-two')).toBe(blogB);
  });

  it('ignores case when nothing matches exactly', () => {
    expect(findProject(all, 'SHOP-API')).toBe(shopApi);
    expect(findProject(all, 'shop api')).toBe(shopApi);
  });

  it('refuses a name two projects share, listing both with their ids', () => {
    const message = failure(all, 'Blog');
    expect(message).toBe(
      `"Blog" fits 2 projects: blog-one ("Blog") ${blogA.id}, blog-two ("Blog") ${blogB.id}; name one by its subdomain or id`,
    );
    expect(failure(all, 'blog')).toContain('fits 2 projects');
  });

  it('refuses a word that is one project’s subdomain and another’s name', () => {
    const clash = [project('other', 'first'), project('Second', 'other')];
    expect(failure(clash, 'other')).toContain('fits 2 projects');
  });

  it('suggests the closest projects for an unknown word', () => {
    expect(failure(all, 'shpo')).toBe('no project "shpo"; did you mean shop ("Shop")?');
    expect(failure(all, 'blog-three')).toBe(
      'no project "blog-three"; did you mean blog-one ("Blog"), blog-two ("Blog")?',
    );
    expect(failure(all, 'shop-ap')).toBe(
      'no project "shop-ap"; did you mean shop-api ("Shop API"), shop ("Shop")?',
    );
  });

  it('lists the projects when none is close, and says when there are none', () => {
    expect(failure(all, 'zzzzzzzz')).toBe(
      'no project "zzzzzzzz"; the projects are shop ("Shop"), shop-api ("Shop API"), blog-one ("Blog"), blog-two ("Blog"), other ("api")',
    );
    const many = Array.from({ length: 10 }, (_, i) => project(`p${i}`, `p${i}`));
    expect(failure(many, 'zzzzzzzz')).toMatch(/, p7 and 2 more \(wharf projects\)$/);
    expect(failure([], 'shop')).toBe('no project "shop": the account has none yet');
  });
});

describe('closeMatches', () => {
  it('ranks substrings and small typos, best first, at most five', () => {
    const many = Array.from({ length: 8 }, (_, i) => project(`Web ${i}`, `web-${i}`));
    expect(closeMatches('web', many)).toHaveLength(5);
    expect(closeMatches('shop-apu', all).map((p) => p.subdomain)).toEqual(['shop-api', 'shop']);
  });
});

describe('editDistance', () => {
  it.each([
    ['', '', 0],
    ['abc', '', 3],
    ['kitten', 'sitting', 3],
    ['shop', 'shpo', 2],
    ['same', 'same', 0],
  ])('%s → %s is %i', (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
  });
});
